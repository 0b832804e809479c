//! Return-routability cookies ([`CookieJar`]): the server's proof that a hello's source
//! address receives what is sent there, without keeping any state for addresses that have not
//! proven themselves.
//!
//! A hello without a valid cookie is answered with a [`crate::Message::Challenge`] only (32
//! bytes, never more than the 1200-byte hello); its cookie is a keyed BLAKE2s MAC (16 bytes)
//! over the hello's source address and port, its session id and a coarse time bucket
//! ([`BUCKET`]), under a random secret that is replaced at every new bucket. A cookie is
//! accepted in its bucket and the next one (30-60 s): the client says hello again with it,
//! from the same address, and only then does the server create the session or move one of its
//! paths to that address. Someone who spoofs another address never sees the cookie, so the
//! server never sends more to that address than the challenge.

use std::net::{IpAddr, SocketAddr};

use blake2::digest::consts::U16;
use blake2::digest::{KeyInit, Mac};
use blake2::Blake2sMac;

use sprout_core::time::{Duration, Instant};

use crate::wire::{Cookie, COOKIE_BYTES};

/// Length of a cookie's time bucket, µs (30 s): a cookie lives 30 to 60 s.
pub const BUCKET: Duration = Duration::from_secs(30);

/// Bytes of the server's secret.
pub const SECRET_BYTES: usize = 32;

/// The server's cookie secrets: the current bucket's and the previous one's.
#[derive(Clone)]
pub struct CookieJar {
    /// The bucket the current secret belongs to.
    bucket: u64,
    current: [u8; SECRET_BYTES],
    previous: [u8; SECRET_BYTES],
}

impl std::fmt::Debug for CookieJar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secrets.
        f.debug_struct("CookieJar")
            .field("bucket", &self.bucket)
            .finish_non_exhaustive()
    }
}

impl CookieJar {
    /// A jar whose current bucket is `now`'s, with the random `secret` (and another random
    /// `previous` secret, so that no cookie of a bucket before the start is accepted by
    /// chance).
    pub fn new(now: Instant, secret: [u8; SECRET_BYTES], previous: [u8; SECRET_BYTES]) -> Self {
        CookieJar {
            bucket: now.as_micros() / BUCKET.as_micros(),
            current: secret,
            previous,
        }
    }

    /// Moves to `now`'s bucket if it is a new one, drawing the new secret from `fresh`
    /// (the current one becomes the previous one; after a gap of more than one bucket, both
    /// are new).
    pub fn rotate(&mut self, now: Instant, mut fresh: impl FnMut() -> [u8; SECRET_BYTES]) {
        let bucket = now.as_micros() / BUCKET.as_micros();
        if bucket <= self.bucket {
            return;
        }
        self.previous = if bucket == self.bucket + 1 {
            self.current
        } else {
            fresh()
        };
        self.current = fresh();
        self.bucket = bucket;
    }

    /// The cookie of `session` for `addr` in the current bucket.
    pub fn cookie(&self, addr: &SocketAddr, session: u64) -> Cookie {
        mac(&self.current, self.bucket, addr, session)
    }

    /// Whether `cookie` is the one of `session` for `addr`, in the current bucket or the
    /// previous one (compared in constant time).
    pub fn check(&self, addr: &SocketAddr, session: u64, cookie: &Cookie) -> bool {
        let a = verify(&self.current, self.bucket, addr, session, cookie);
        let b = verify(
            &self.previous,
            self.bucket.wrapping_sub(1),
            addr,
            session,
            cookie,
        );
        a | b
    }
}

/// The MAC's input: bucket, session, address family, address, port.
fn keyed(
    secret: &[u8; SECRET_BYTES],
    bucket: u64,
    addr: &SocketAddr,
    session: u64,
) -> Blake2sMac<U16> {
    let mut m =
        <Blake2sMac<U16> as KeyInit>::new_from_slice(secret).expect("a 32-byte key fits BLAKE2s");
    m.update(&bucket.to_be_bytes());
    m.update(&session.to_be_bytes());
    match addr.ip() {
        IpAddr::V4(ip) => {
            m.update(&[4]);
            m.update(&ip.octets());
        }
        IpAddr::V6(ip) => {
            m.update(&[6]);
            m.update(&ip.octets());
        }
    }
    m.update(&addr.port().to_be_bytes());
    m
}

fn mac(secret: &[u8; SECRET_BYTES], bucket: u64, addr: &SocketAddr, session: u64) -> Cookie {
    let out = keyed(secret, bucket, addr, session).finalize().into_bytes();
    let mut c = [0u8; COOKIE_BYTES];
    c.copy_from_slice(&out);
    c
}

fn verify(
    secret: &[u8; SECRET_BYTES],
    bucket: u64,
    addr: &SocketAddr,
    session: u64,
    cookie: &Cookie,
) -> bool {
    keyed(secret, bucket, addr, session)
        .verify_slice(cookie)
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jar(now: u64) -> CookieJar {
        CookieJar::new(
            Instant::from_micros(now),
            [1; SECRET_BYTES],
            [2; SECRET_BYTES],
        )
    }

    #[test]
    fn a_cookie_binds_address_port_and_session() {
        let j = jar(0);
        let a: SocketAddr = "192.0.2.1:4000".parse().unwrap();
        let c = j.cookie(&a, 7);
        assert!(j.check(&a, 7, &c));
        assert!(!j.check(&"192.0.2.1:4001".parse().unwrap(), 7, &c), "port");
        assert!(
            !j.check(&"192.0.2.2:4000".parse().unwrap(), 7, &c),
            "address"
        );
        assert!(
            !j.check(&"[::ffff:192.0.2.1]:4000".parse().unwrap(), 7, &c),
            "family"
        );
        assert!(!j.check(&a, 8, &c), "session");
        let mut bent = c;
        bent[0] ^= 1;
        assert!(!j.check(&a, 7, &bent));
    }

    #[test]
    fn cookies_live_one_bucket_more_and_secrets_rotate() {
        let mut j = jar(0);
        let a: SocketAddr = "[2001:db8::1]:9".parse().unwrap();
        let c = j.cookie(&a, 1);
        let mut n = 10u8;
        let mut fresh = || {
            n += 1;
            [n; SECRET_BYTES]
        };
        j.rotate(
            Instant::ZERO + BUCKET - Duration::from_micros(1),
            &mut fresh,
        );
        assert!(j.check(&a, 1, &c), "same bucket");
        j.rotate(Instant::ZERO + BUCKET, &mut fresh);
        assert!(j.check(&a, 1, &c), "the next bucket still accepts it");
        assert_ne!(j.cookie(&a, 1), c, "a new secret");
        j.rotate(Instant::ZERO + BUCKET * 2, &mut fresh);
        assert!(!j.check(&a, 1, &c), "two buckets on: refused");
        let d = j.cookie(&a, 1);
        j.rotate(Instant::ZERO + BUCKET * 10, &mut fresh);
        assert!(!j.check(&a, 1, &d), "after a long gap both secrets are new");
    }
}
