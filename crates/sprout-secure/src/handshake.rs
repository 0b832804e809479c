//! The Noise IK handshake messages (through `snow`) and `mac1`.
//!
//! The client (initiator) knows the server's static public key; message 1 carries the
//! client's ephemeral and (encrypted) static key and an encrypted, authenticated payload
//! ([`InitiationPayload`]); message 2 carries the server's ephemeral and a payload naming the
//! key epoch and the server's session id. Both sides then split into the two transport keys,
//! used through snow's stateless transport (the nonce is the data message's counter).
//!
//! `mac1` (as in WireGuard) is a keyed BLAKE2s over the whole initiation, keyed by a hash of
//! the server's public key: a server refuses random bytes, or an initiation meant for another
//! server, with one hash and before any Diffie-Hellman.

use blake2::digest::consts::U16;
use blake2::digest::{Digest, KeyInit, Mac};
use blake2::{Blake2s256, Blake2sMac};
use snow::params::NoiseParams;
use snow::{Builder, HandshakeState, StatelessTransportState};

use crate::keys::{PrivateKey, PublicKey};
use crate::wire::{
    self, COOKIE_BYTES, FLAG_MAC2, INITIATION_PAYLOAD_FIXED_BYTES, MAC_BYTES, MAX_GREETING_BYTES,
    MAX_INITIATION_BYTES, MIN_INITIATION_BYTES, PREFIX_BYTES, REFUSAL_BYTES, REFUSAL_PAYLOAD_BYTES,
    RESPONSE_BYTES, RESPONSE_PAYLOAD_BYTES,
};

/// The Noise protocol name.
pub const NOISE_PARAMS: &str = "Noise_IK_25519_ChaChaPoly_BLAKE2s";
/// The Noise prologue: binds the wire version into the handshake hash, so a handshake of
/// another version cannot complete.
pub const PROLOGUE: &[u8] = b"sprout wire v2";
/// Label hashed with the server's public key into the `mac1` key.
pub const MAC1_LABEL: &[u8] = b"sprout mac1";

/// Initiation kind: a new session.
pub const KIND_NEW: u8 = 0;
/// Initiation kind: a rekey of an existing session.
pub const KIND_REKEY: u8 = 1;

/// The parsed Noise parameters.
pub fn noise_params() -> NoiseParams {
    // The name is a constant that snow knows; parsing it cannot fail.
    NOISE_PARAMS
        .parse()
        .unwrap_or_else(|_| unreachable!("snow parses {NOISE_PARAMS}"))
}

/// The `mac1` key of one server, ready to use.
#[derive(Clone)]
pub struct Mac1 {
    mac: Blake2sMac<U16>,
}

impl Mac1 {
    /// The `mac1` key of the server whose public key is `server`.
    pub fn new(server: &PublicKey) -> Mac1 {
        let mut h = Blake2s256::new();
        h.update(MAC1_LABEL);
        h.update(server.0);
        let key = h.finalize();
        Mac1 {
            mac: <Blake2sMac<U16> as KeyInit>::new_from_slice(&key)
                .unwrap_or_else(|_| unreachable!("a 32-byte key fits BLAKE2s")),
        }
    }

    /// The `mac1` of `message`.
    pub fn compute(&self, message: &[u8]) -> [u8; MAC_BYTES] {
        let mut m = self.mac.clone();
        Mac::update(&mut m, message);
        let mut out = [0u8; MAC_BYTES];
        out.copy_from_slice(&m.finalize().into_bytes());
        out
    }

    /// Whether the last [`MAC_BYTES`] of `initiation` are the `mac1` of the rest (compared in
    /// constant time).
    pub fn verify(&self, initiation: &[u8]) -> bool {
        if initiation.len() < MAC_BYTES {
            return false;
        }
        let (body, tag) = initiation.split_at(initiation.len() - MAC_BYTES);
        let mut m = self.mac.clone();
        Mac::update(&mut m, body);
        m.verify_slice(tag).is_ok()
    }

    /// Whether the `mac1` of `initiation` (shape checked: with or without `mac2`) is right.
    pub fn verify_initiation(&self, initiation: &[u8]) -> bool {
        self.verify(&initiation[..initiation.len() - mac2_bytes(initiation)])
    }
}

/// Bytes of `mac2` at the end of an initiation whose shape was checked (0 or 16).
fn mac2_bytes(initiation: &[u8]) -> usize {
    if initiation[3] == FLAG_MAC2 {
        MAC_BYTES
    } else {
        0
    }
}

/// The `mac1` of an initiation whose shape was checked.
pub fn initiation_mac1(initiation: &[u8]) -> [u8; MAC_BYTES] {
    let end = initiation.len() - mac2_bytes(initiation);
    let mut m = [0u8; MAC_BYTES];
    m.copy_from_slice(&initiation[end - MAC_BYTES..end]);
    m
}

/// The Noise message of an initiation whose shape was checked (without prefix and macs): what
/// identifies it whether or not it carries `mac2`.
pub fn initiation_body(initiation: &[u8]) -> &[u8] {
    &initiation[PREFIX_BYTES..initiation.len() - MAC_BYTES - mac2_bytes(initiation)]
}

/// `plain` (an initiation without `mac2`, as [`initiate`] made it) with `mac2` under `cookie`:
/// the reserved byte set to [`FLAG_MAC2`], `mac1` made again over that, then `mac2`.
pub fn with_mac2(plain: &[u8], mac1: &Mac1, cookie: &[u8; COOKIE_BYTES]) -> Vec<u8> {
    let mut d = plain.to_vec();
    d.truncate(plain.len().saturating_sub(MAC_BYTES));
    if d.len() > 3 {
        d[3] = FLAG_MAC2;
    }
    let tag = mac1.compute(&d);
    d.extend_from_slice(&tag);
    let tag2 = crate::cookie::mac2(cookie, &d);
    d.extend_from_slice(&tag2);
    d
}
/// The payload of a handshake initiation (see [`crate::wire`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InitiationPayload {
    /// [`KIND_NEW`] or [`KIND_REKEY`].
    pub kind: u8,
    /// The client's receiver index.
    pub client_index: u32,
    /// The server session being rekeyed (0 for a new session).
    pub session: u32,
    /// The client's handshake number (grows with each fresh initiation).
    pub number: u64,
    /// The client's greeting.
    pub greeting: Vec<u8>,
}

impl InitiationPayload {
    /// The payload's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(INITIATION_PAYLOAD_FIXED_BYTES + self.greeting.len());
        b.push(self.kind);
        b.extend_from_slice(&self.client_index.to_be_bytes());
        b.extend_from_slice(&self.session.to_be_bytes());
        b.extend_from_slice(&self.number.to_be_bytes());
        b.extend_from_slice(&self.greeting);
        b
    }

    /// Parses a payload; `None` if it is malformed.
    pub fn parse(b: &[u8]) -> Option<InitiationPayload> {
        if b.len() < INITIATION_PAYLOAD_FIXED_BYTES
            || b.len() > INITIATION_PAYLOAD_FIXED_BYTES + MAX_GREETING_BYTES
        {
            return None;
        }
        let kind = b[0];
        if kind != KIND_NEW && kind != KIND_REKEY {
            return None;
        }
        Some(InitiationPayload {
            kind,
            client_index: wire::be_u32(b, 1),
            session: wire::be_u32(b, 5),
            number: wire::be_u64(b, 9),
            greeting: b[INITIATION_PAYLOAD_FIXED_BYTES..].to_vec(),
        })
    }
}

/// A client's handshake in progress: its Noise state and the initiation it sent.
pub struct Initiator {
    /// The Noise state, waiting for message 2.
    pub state: HandshakeState,
    /// The initiation datagram (resent as is on retries).
    pub datagram: Vec<u8>,
}

/// Starts a handshake: builds the initiation datagram carrying `payload`.
pub fn initiate(
    client: &PrivateKey,
    server: &PublicKey,
    mac1: &Mac1,
    payload: &InitiationPayload,
) -> Result<Initiator, snow::Error> {
    let mut state = Builder::new(noise_params())
        .local_private_key(client.as_bytes())?
        .remote_public_key(&server.0)?
        .prologue(PROLOGUE)?
        .build_initiator()?;
    let body = payload.encode();
    let mut datagram = vec![0u8; MAX_INITIATION_BYTES];
    datagram[..PREFIX_BYTES].copy_from_slice(&[
        wire::MAGIC,
        wire::VERSION,
        wire::TYPE_INITIATION,
        0,
    ]);
    let n = state.write_message(&body, &mut datagram[PREFIX_BYTES..])?;
    datagram.truncate(PREFIX_BYTES + n);
    let tag = mac1.compute(&datagram);
    datagram.extend_from_slice(&tag);
    Ok(Initiator { state, datagram })
}

/// What a server learned from an initiation it accepted.
pub struct Responder {
    /// The Noise state, ready to write message 2.
    pub state: HandshakeState,
    /// The client's static public key.
    pub client: PublicKey,
    /// The decrypted payload.
    pub payload: InitiationPayload,
}

/// Why a server refused an initiation after `mac1` (or a client a response).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InitiationError {
    /// Noise refused it (forged, corrupted, not for this server's key).
    Noise,
    /// It decrypted but its payload is malformed.
    Malformed,
}

/// Checks the length of an initiation and its reserved byte (0, or [`FLAG_MAC2`] with
/// `mac2` after `mac1`).
pub fn initiation_shape_ok(datagram: &[u8]) -> Result<(), crate::DropReason> {
    let extra = match datagram.get(3) {
        Some(0) => 0,
        Some(&FLAG_MAC2) => MAC_BYTES,
        Some(_) => return Err(crate::DropReason::Malformed),
        None => return Err(crate::DropReason::Truncated),
    };
    if datagram.len() < MIN_INITIATION_BYTES + extra {
        return Err(crate::DropReason::Truncated);
    }
    if datagram.len() > MAX_INITIATION_BYTES + extra {
        return Err(crate::DropReason::Malformed);
    }
    Ok(())
}

/// The client's ephemeral public key in an initiation whose shape was checked.
pub fn initiation_ephemeral(datagram: &[u8]) -> [u8; 32] {
    let mut e = [0u8; 32];
    e.copy_from_slice(&datagram[PREFIX_BYTES..PREFIX_BYTES + 32]);
    e
}

/// Reads an initiation (shape and `mac1` already checked) with the server's key: the costly
/// part (Diffie-Hellman), to run only within the rate limit.
pub fn respond(server: &PrivateKey, datagram: &[u8]) -> Result<Responder, InitiationError> {
    let mut state = Builder::new(noise_params())
        .local_private_key(server.as_bytes())
        .and_then(|b| b.prologue(PROLOGUE))
        .and_then(|b| b.build_responder())
        .map_err(|_| InitiationError::Noise)?;
    let body = initiation_body(datagram);
    let mut payload = vec![0u8; body.len()];
    let n = state
        .read_message(body, &mut payload)
        .map_err(|_| InitiationError::Noise)?;
    let client = match state.get_remote_static() {
        Some(s) if s.len() == 32 => {
            let mut k = [0u8; 32];
            k.copy_from_slice(s);
            PublicKey(k)
        }
        _ => return Err(InitiationError::Noise),
    };
    let payload = InitiationPayload::parse(&payload[..n]).ok_or(InitiationError::Malformed)?;
    Ok(Responder {
        state,
        client,
        payload,
    })
}

/// Writes the response to an accepted initiation and returns it with the transport keys.
pub fn write_response(
    mut state: HandshakeState,
    client_index: u32,
    epoch: u8,
    session: u32,
) -> Result<(Vec<u8>, StatelessTransportState), snow::Error> {
    let mut datagram = vec![0u8; RESPONSE_BYTES];
    datagram[..PREFIX_BYTES].copy_from_slice(&[wire::MAGIC, wire::VERSION, wire::TYPE_RESPONSE, 0]);
    datagram[4..8].copy_from_slice(&client_index.to_be_bytes());
    let mut payload = [0u8; RESPONSE_PAYLOAD_BYTES];
    payload[0] = epoch;
    payload[1..5].copy_from_slice(&session.to_be_bytes());
    let n = state.write_message(&payload, &mut datagram[8..])?;
    datagram.truncate(8 + n);
    let transport = state.into_stateless_transport_mode()?;
    Ok((datagram, transport))
}

/// Why a server refused to open a session (the reason byte of a refusal).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RefusalReason {
    /// The server holds its maximum of sessions.
    Full,
    /// The client's source address (an IPv6 /64 counts as one) holds its cap of sessions.
    SourceCap,
    /// The client's key holds its cap of sessions.
    KeyCap,
}

impl RefusalReason {
    /// The reason's byte on the wire.
    pub fn code(self) -> u8 {
        match self {
            RefusalReason::Full => 1,
            RefusalReason::SourceCap => 2,
            RefusalReason::KeyCap => 3,
        }
    }

    /// The reason of a byte on the wire.
    pub fn from_code(code: u8) -> Option<RefusalReason> {
        match code {
            1 => Some(RefusalReason::Full),
            2 => Some(RefusalReason::SourceCap),
            3 => Some(RefusalReason::KeyCap),
            _ => None,
        }
    }
}

/// What a server's authenticated answer to an initiation said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerReply {
    /// A session (or rekey) was opened: the key epoch and the server's session id.
    Accepted {
        /// The key epoch of the new keys.
        epoch: u8,
        /// The server's session id.
        session: u32,
    },
    /// No session: why, the limit reached (sessions) and the server's idle timeout (s).
    Refused {
        /// Why.
        reason: RefusalReason,
        /// The limit reached, sessions.
        limit: u32,
        /// The server's idle timeout, seconds.
        idle_timeout_s: u32,
    },
}

/// Writes a refusal of an initiation (read with [`respond`]): a Noise message 2 whose payload
/// says why, so that only this server can write it and only the initiation's sender read it.
/// The handshake's keys are thrown away: the server keeps no state for it.
pub fn write_refusal(
    mut state: HandshakeState,
    client_index: u32,
    reason: RefusalReason,
    limit: u32,
    idle_timeout_s: u32,
) -> Result<Vec<u8>, snow::Error> {
    let mut datagram = vec![0u8; REFUSAL_BYTES];
    datagram[..PREFIX_BYTES].copy_from_slice(&[wire::MAGIC, wire::VERSION, wire::TYPE_REFUSAL, 0]);
    datagram[4..8].copy_from_slice(&client_index.to_be_bytes());
    let mut payload = [0u8; REFUSAL_PAYLOAD_BYTES];
    payload[0] = reason.code();
    payload[1..5].copy_from_slice(&limit.to_be_bytes());
    payload[5..9].copy_from_slice(&idle_timeout_s.to_be_bytes());
    let n = state.write_message(&payload, &mut datagram[8..])?;
    datagram.truncate(8 + n);
    Ok(datagram)
}

/// The client's index a response or refusal is addressed to, if it has the shape of one
/// (each type has its own length, so a changed type byte is refused before any
/// cryptography).
pub fn response_receiver(datagram: &[u8]) -> Result<u32, crate::DropReason> {
    let expected = if datagram.get(2) == Some(&wire::TYPE_REFUSAL) {
        REFUSAL_BYTES
    } else {
        RESPONSE_BYTES
    };
    if datagram.len() < expected {
        return Err(crate::DropReason::Truncated);
    }
    if datagram.len() > expected || datagram[3] != 0 {
        return Err(crate::DropReason::Malformed);
    }
    Ok(wire::be_u32(datagram, 4))
}

/// Reads a response or refusal (shape checked) with the client's handshake state. On failure
/// the state is as before (snow restores it), so a forged answer does not spoil the handshake.
pub fn read_response(
    state: &mut HandshakeState,
    datagram: &[u8],
) -> Result<ServerReply, InitiationError> {
    let mut payload = [0u8; REFUSAL_BYTES];
    let n = state
        .read_message(&datagram[8..], &mut payload)
        .map_err(|_| InitiationError::Noise)?;
    if !state.is_handshake_finished() {
        return Err(InitiationError::Malformed);
    }
    match (datagram[2], n) {
        (wire::TYPE_RESPONSE, RESPONSE_PAYLOAD_BYTES) => Ok(ServerReply::Accepted {
            epoch: payload[0],
            session: wire::be_u32(&payload, 1),
        }),
        (wire::TYPE_REFUSAL, REFUSAL_PAYLOAD_BYTES) => Ok(ServerReply::Refused {
            reason: RefusalReason::from_code(payload[0]).ok_or(InitiationError::Malformed)?,
            limit: wire::be_u32(&payload, 1),
            idle_timeout_s: wire::be_u32(&payload, 5),
        }),
        _ => Err(InitiationError::Malformed),
    }
}
