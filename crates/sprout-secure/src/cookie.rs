//! WireGuard's cookie reply (its whitepaper, section 5.4.7), so that a flood of handshake
//! initiations that pass `mac1` cannot crowd out genuine clients.
//!
//! While the server is under load (its handshake token bucket nearly empty), it answers an
//! initiation that carries no valid `mac2` with a [cookie reply](crate::wire) instead of doing
//! any Diffie-Hellman: the cookie is a keyed BLAKE2s of the initiation's source address and
//! port under a secret that changes every [`SECRET_LIFETIME`], encrypted with
//! XChaCha20-Poly1305 under a key derived from the server's public key, with the initiation's
//! `mac1` as associated data (only who sent that initiation can read it). The client keeps the
//! cookie for [`COOKIE_LIFETIME`] and puts `mac2` (a keyed BLAKE2s of the initiation under the
//! cookie) on its next initiations. An initiation with a valid `mac2` proves that its sender
//! receives at its source address, so the server rate-limits it per source address only: an
//! attacker flooding from spoofed addresses never gets a cookie for them.

use blake2::digest::consts::U16;
use blake2::digest::{Digest, KeyInit, Mac};
use blake2::{Blake2s256, Blake2sMac};
use chacha20poly1305::aead::AeadInPlace;
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use sprout_core::time::{Duration, Instant};
use std::net::SocketAddr;

use crate::keys::PublicKey;
use crate::wire::{
    self, COOKIE_BYTES, COOKIE_NONCE_BYTES, COOKIE_REPLY_BYTES, MAC_BYTES, PREFIX_BYTES, TAG_BYTES,
};

/// Label hashed with the server's public key into the cookie reply's encryption key.
pub const COOKIE_LABEL: &[u8] = b"sprout cookie";
/// How long the server keeps one cookie secret before it makes a new one (2 minutes, as in
/// WireGuard).
pub const SECRET_LIFETIME: Duration = Duration::from_secs(120);
/// How long a client uses a cookie after it arrived (a little under [`SECRET_LIFETIME`], as in
/// WireGuard, so that a cookie is not used right as its secret changes).
pub const COOKIE_LIFETIME: Duration = Duration::from_secs(115);

/// A keyed BLAKE2s-128 of `message` under `key` (16 or 32 bytes).
fn mac16(key: &[u8], message: &[&[u8]]) -> [u8; MAC_BYTES] {
    let mut m = <Blake2sMac<U16> as KeyInit>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("a key of at most 32 bytes fits BLAKE2s"));
    for part in message {
        Mac::update(&mut m, part);
    }
    let mut out = [0u8; MAC_BYTES];
    out.copy_from_slice(&m.finalize().into_bytes());
    out
}

/// `mac2` of `message` (the initiation up to and including `mac1`) under `cookie`.
pub fn mac2(cookie: &[u8; COOKIE_BYTES], message: &[u8]) -> [u8; MAC_BYTES] {
    mac16(cookie, &[message])
}

/// The cookie reply's encryption, shared by a server and its clients (derived from the
/// server's public key).
#[derive(Clone)]
pub struct CookieCipher {
    aead: XChaCha20Poly1305,
}

impl CookieCipher {
    /// The cipher of the server whose public key is `server`.
    pub fn new(server: &PublicKey) -> CookieCipher {
        let mut h = Blake2s256::new();
        h.update(COOKIE_LABEL);
        h.update(server.0);
        let key = h.finalize();
        CookieCipher {
            aead: <XChaCha20Poly1305 as KeyInit>::new(&key),
        }
    }

    /// The cookie reply carrying `cookie` to the sender of the initiation whose `mac1` is
    /// `mac1`, with `nonce` (random).
    pub fn reply(
        &self,
        cookie: &[u8; COOKIE_BYTES],
        mac1: &[u8; MAC_BYTES],
        nonce: &[u8; COOKIE_NONCE_BYTES],
    ) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(COOKIE_REPLY_BYTES);
        out.extend_from_slice(&[wire::MAGIC, wire::VERSION, wire::TYPE_COOKIE, 0]);
        out.extend_from_slice(nonce);
        let mut sealed = *cookie;
        let tag = self
            .aead
            .encrypt_in_place_detached(XNonce::from_slice(nonce), mac1, &mut sealed)
            .ok()?;
        out.extend_from_slice(&sealed);
        out.extend_from_slice(&tag);
        Some(out)
    }

    /// The cookie in `reply` (a cookie reply whose prefix was checked), if it was made for the
    /// initiation whose `mac1` is `mac1`.
    pub fn open(&self, reply: &[u8], mac1: &[u8; MAC_BYTES]) -> Option<[u8; COOKIE_BYTES]> {
        if reply.len() != COOKIE_REPLY_BYTES || reply[3] != 0 {
            return None;
        }
        let nonce = &reply[PREFIX_BYTES..PREFIX_BYTES + COOKIE_NONCE_BYTES];
        let at = PREFIX_BYTES + COOKIE_NONCE_BYTES;
        let mut cookie = [0u8; COOKIE_BYTES];
        cookie.copy_from_slice(&reply[at..at + COOKIE_BYTES]);
        let tag = &reply[at + COOKIE_BYTES..at + COOKIE_BYTES + TAG_BYTES];
        self.aead
            .decrypt_in_place_detached(XNonce::from_slice(nonce), mac1, &mut cookie, tag.into())
            .ok()?;
        Some(cookie)
    }
}

/// The server's side: the rotating secret, cookies of source addresses, `mac2` checks and
/// cookie replies.
pub struct CookieMaker {
    cipher: CookieCipher,
    secret: [u8; 32],
    /// When `secret` was made (`None`: not yet).
    born: Option<Instant>,
}

impl CookieMaker {
    /// The cookie maker of the server whose public key is `server`.
    pub fn new(server: &PublicKey) -> CookieMaker {
        CookieMaker {
            cipher: CookieCipher::new(server),
            secret: [0u8; 32],
            born: None,
        }
    }

    /// Makes a new secret if the current one is older than [`SECRET_LIFETIME`] at `now`;
    /// false if the system's random generator failed (then no cookie is made).
    fn fresh_secret(&mut self, now: Instant) -> bool {
        let stale = self.born.is_none_or(|b| now - b >= SECRET_LIFETIME);
        if stale {
            if getrandom::getrandom(&mut self.secret).is_err() {
                self.born = None;
                return false;
            }
            self.born = Some(now);
        }
        true
    }

    /// The cookie of `addr` at `now`.
    fn cookie(&self, addr: SocketAddr) -> [u8; COOKIE_BYTES] {
        let ip = match addr.ip() {
            std::net::IpAddr::V4(a) => a.to_ipv6_mapped().octets(),
            std::net::IpAddr::V6(a) => a.octets(),
        };
        mac16(&self.secret, &[&ip, &addr.port().to_be_bytes()])
    }

    /// Whether `initiation` (shape and `mac1` checked) carries a `mac2` made with the cookie
    /// `from` holds now (compared in constant time).
    pub fn mac2_valid(&mut self, now: Instant, from: SocketAddr, initiation: &[u8]) -> bool {
        if initiation.len() < 2 * MAC_BYTES || initiation[3] != wire::FLAG_MAC2 {
            return false;
        }
        if !self.fresh_secret(now) {
            return false;
        }
        let cookie = self.cookie(from);
        let (body, tag) = initiation.split_at(initiation.len() - MAC_BYTES);
        let mut m = <Blake2sMac<U16> as KeyInit>::new_from_slice(&cookie)
            .unwrap_or_else(|_| unreachable!("a 16-byte key fits BLAKE2s"));
        Mac::update(&mut m, body);
        m.verify_slice(tag).is_ok()
    }

    /// The cookie reply to an initiation from `from` whose `mac1` is `mac1`; `None` if the
    /// system's random generator failed.
    pub fn reply(
        &mut self,
        now: Instant,
        from: SocketAddr,
        mac1: &[u8; MAC_BYTES],
    ) -> Option<Vec<u8>> {
        if !self.fresh_secret(now) {
            return None;
        }
        let cookie = self.cookie(from);
        let mut nonce = [0u8; COOKIE_NONCE_BYTES];
        getrandom::getrandom(&mut nonce).ok()?;
        self.cipher.reply(&cookie, mac1, &nonce)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::PrivateKey;

    #[test]
    fn a_cookie_reply_opens_only_with_its_mac1_and_server_key() {
        let server = PrivateKey::generate().public_key();
        let mut maker = CookieMaker::new(&server);
        let from: SocketAddr = "192.0.2.1:4000".parse().unwrap();
        let mac1 = [7u8; MAC_BYTES];
        let reply = maker.reply(Instant::ZERO, from, &mac1).unwrap();
        assert_eq!(reply.len(), COOKIE_REPLY_BYTES);
        assert_eq!(wire::message_type(&reply), Ok(wire::TYPE_COOKIE));
        let cipher = CookieCipher::new(&server);
        let cookie = cipher.open(&reply, &mac1).expect("opens");
        assert_eq!(cookie, maker.cookie(from));
        assert!(cipher.open(&reply, &[8u8; MAC_BYTES]).is_none());
        let other = CookieCipher::new(&PrivateKey::generate().public_key());
        assert!(other.open(&reply, &mac1).is_none());
        let mut bent = reply.clone();
        bent[40] ^= 1;
        assert!(cipher.open(&bent, &mac1).is_none());
    }

    #[test]
    fn mac2_is_bound_to_the_address_and_the_secrets_lifetime() {
        let server = PrivateKey::generate().public_key();
        let mut maker = CookieMaker::new(&server);
        let from: SocketAddr = "192.0.2.1:4000".parse().unwrap();
        let reply = maker.reply(Instant::ZERO, from, &[1; 16]).unwrap();
        let cookie = CookieCipher::new(&server).open(&reply, &[1; 16]).unwrap();
        let mut msg = vec![
            wire::MAGIC,
            wire::VERSION,
            wire::TYPE_INITIATION,
            wire::FLAG_MAC2,
        ];
        msg.extend_from_slice(&[5u8; 60]);
        let tag = mac2(&cookie, &msg);
        msg.extend_from_slice(&tag);
        let t = Instant::ZERO + Duration::from_secs(60);
        assert!(maker.mac2_valid(t, from, &msg));
        assert!(!maker.mac2_valid(t, "192.0.2.1:4001".parse().unwrap(), &msg));
        let mut unflagged = msg.clone();
        unflagged[3] = 0;
        assert!(!maker.mac2_valid(t, from, &unflagged));
        // After the secret changes, the old cookie is worthless.
        assert!(!maker.mac2_valid(t + SECRET_LIFETIME, from, &msg));
    }
}
