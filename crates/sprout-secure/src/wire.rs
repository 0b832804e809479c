//! The version-2 wire format: every Sprout datagram is one of three messages. All integers are
//! big-endian.
//!
//! ```text
//! every message:
//!   0  1  magic 0x53 ('S', as in version 1)
//!   1  1  version (2; version 1 was unencrypted and is refused)
//!   2  1  type: 1 handshake initiation, 2 handshake response, 3 data
//! HANDSHAKE INITIATION (client -> server)
//!   3  1  reserved, 0
//!   4  4  sender index: the client's receiver index for this session
//!   8  ..  Noise IK message 1: ephemeral (32), encrypted static (32 + 16), encrypted payload
//!          (payload + 16); the payload is: kind (0 new session, 1 rekey), the server's session
//!          id being rekeyed (4, 0 for a new session), then the client's greeting
//!  -16 16  mac1: keyed BLAKE2s-128 over everything before it, key BLAKE2s("sprout mac1" ||
//!          server public key)
//! HANDSHAKE RESPONSE (server -> client)
//!   3  1  key epoch the new keys will carry
//!   4  4  sender index: the server's session id
//!   8  4  receiver index: the client's index from the initiation
//!  12  48  Noise IK message 2: ephemeral (32), empty encrypted payload (16)
//! DATA (either way)
//!   3  1  key epoch
//!   4  4  receiver index (the connection id the receiver chose)
//!   8  8  counter: the nonce, 0, 1, 2, ... per direction and key
//!  16  ..  ChaCha20-Poly1305 ciphertext of the core datagram, then the 16-byte tag
//! ```
//!
//! A data message with an empty plaintext is a keepalive (it confirms a handshake).

/// Magic byte, as in version 1.
pub const MAGIC: u8 = 0x53;
/// The wire version this build speaks.
pub const VERSION: u8 = 2;
/// Message type: handshake initiation.
pub const TYPE_INITIATION: u8 = 1;
/// Message type: handshake response.
pub const TYPE_RESPONSE: u8 = 2;
/// Message type: data.
pub const TYPE_DATA: u8 = 3;
/// Bytes of a data message before its ciphertext.
pub const DATA_HEADER_BYTES: usize = 16;
/// Bytes of the AEAD tag.
pub const TAG_BYTES: usize = 16;
/// Bytes a data message adds to the core datagram it carries: header and tag.
pub const OVERHEAD_BYTES: usize = DATA_HEADER_BYTES + TAG_BYTES;
/// Longest greeting a client can send in its handshake, in bytes.
pub const MAX_GREETING_BYTES: usize = 512;
