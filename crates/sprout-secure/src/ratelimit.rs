//! Token buckets that bound how many handshakes are processed per second.
//!
//! A bucket holds up to one second's worth of tokens and refills continuously; time is the
//! `now` the caller passes (no clock is read). [`HandshakeLimiter`] combines a global bucket
//! with one bucket per source (an IPv4 address, or an IPv6 /64: see [`source_key`]), in a map
//! bounded to [`MAX_SOURCES`] entries (the stalest is evicted when a new source comes and the
//! map is full).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};

use sprout_core::time::Instant;

/// Most source addresses tracked at once.
pub const MAX_SOURCES: usize = 4096;

/// A server is under load while its global bucket holds less than 1/`UNDER_LOAD_FRACTION` of
/// its one-second burst.
pub const UNDER_LOAD_FRACTION: u64 = 4;

/// What counts as one source: an IPv4 address, or the /64 prefix of an IPv6 address (one
/// host usually holds a whole /64, so its addresses are one source); an IPv4-mapped IPv6
/// address is its IPv4 address.
pub fn source_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let mut o = v6.octets();
                o[8..].fill(0);
                IpAddr::V6(Ipv6Addr::from(o))
            }
        },
    }
}

/// Units of a bucket per token: a bucket of `rate` tokens per second gains `rate` units per
/// microsecond.
const UNITS_PER_TOKEN: u64 = 1_000_000;

/// A token bucket of `rate` tokens per second, holding at most `rate` tokens (a one-second
/// burst). A rate of 0 allows nothing.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    /// Tokens per second.
    rate: u64,
    /// Tokens held, in units of 1/1,000,000 token.
    units: u64,
    /// When `units` was last brought up to date.
    updated: Instant,
}

impl TokenBucket {
    /// A full bucket of `rate` tokens per second at `now`.
    pub fn new(rate: u32, now: Instant) -> TokenBucket {
        let rate = u64::from(rate);
        TokenBucket {
            rate,
            units: rate.saturating_mul(UNITS_PER_TOKEN),
            updated: now,
        }
    }

    fn capacity(&self) -> u64 {
        self.rate.saturating_mul(UNITS_PER_TOKEN)
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = now - self.updated;
        self.units = self
            .units
            .saturating_add(elapsed.as_micros().saturating_mul(self.rate))
            .min(self.capacity());
        self.updated = self.updated.max(now);
    }

    /// Whether a token is there at `now` (takes none).
    pub fn has_token(&mut self, now: Instant) -> bool {
        self.refill(now);
        self.units >= UNITS_PER_TOKEN
    }

    /// Takes a token at `now` if there is one.
    pub fn take(&mut self, now: Instant) -> bool {
        self.refill(now);
        if self.units >= UNITS_PER_TOKEN {
            self.units -= UNITS_PER_TOKEN;
            true
        } else {
            false
        }
    }

    /// Whether the bucket holds less than 1/`fraction` of its capacity at `now`.
    pub fn below(&mut self, now: Instant, fraction: u64) -> bool {
        self.refill(now);
        self.units < (self.capacity() / fraction.max(1)).max(UNITS_PER_TOKEN)
    }

    /// Whether the bucket is full at `now` (then it is as good as a new one).
    pub fn is_full(&self, now: Instant) -> bool {
        let elapsed = now - self.updated;
        self.units
            .saturating_add(elapsed.as_micros().saturating_mul(self.rate))
            >= self.capacity()
    }
}

/// The handshake rate limits of a server: all sources together, and per source
/// ([`source_key`]).
#[derive(Clone, Debug)]
pub struct HandshakeLimiter {
    global: TokenBucket,
    per_source_rate: u32,
    sources: HashMap<IpAddr, TokenBucket>,
}

impl HandshakeLimiter {
    /// Limits of `global` handshakes per second, `per_source` per source address.
    pub fn new(global: u32, per_source: u32, now: Instant) -> HandshakeLimiter {
        HandshakeLimiter {
            global: TokenBucket::new(global, now),
            per_source_rate: per_source,
            sources: HashMap::new(),
        }
    }

    /// Whether a handshake from `source` may be processed at `now`; if so its tokens are
    /// taken. The global bucket is asked first, so sources are only tracked while handshakes
    /// get through, which bounds the work of evicting (at most the global rate).
    pub fn allow(&mut self, source: IpAddr, now: Instant) -> bool {
        if !self.global.has_token(now) {
            return false;
        }
        if !self.take_source(source, now) {
            return false;
        }
        self.global.take(now)
    }

    /// Whether a handshake whose sender proved its source address (`mac2`) may be processed
    /// at `now`: only the source's bucket is asked (a global token is taken if there is one,
    /// so that the load shows).
    pub fn allow_proven(&mut self, source: IpAddr, now: Instant) -> bool {
        if !self.take_source(source, now) {
            return false;
        }
        self.global.take(now);
        true
    }

    /// Whether the global bucket is nearly empty at `now` (less than 1/[`UNDER_LOAD_FRACTION`]
    /// of its burst left): then initiations must prove their source address.
    pub fn under_load(&mut self, now: Instant) -> bool {
        self.global.below(now, UNDER_LOAD_FRACTION)
    }

    /// Takes a token of `source`'s bucket at `now`, if there is one.
    fn take_source(&mut self, source: IpAddr, now: Instant) -> bool {
        let source = source_key(source);
        if !self.sources.contains_key(&source) && self.sources.len() >= MAX_SOURCES {
            self.evict(now);
        }
        let rate = self.per_source_rate;
        self.sources
            .entry(source)
            .or_insert_with(|| TokenBucket::new(rate, now))
            .take(now)
    }

    /// Makes room for one source: forgets every full bucket (as good as new), or else the
    /// stalest one.
    fn evict(&mut self, now: Instant) {
        self.sources.retain(|_, b| !b.is_full(now));
        if self.sources.len() >= MAX_SOURCES {
            if let Some(stalest) = self
                .sources
                .iter()
                .min_by_key(|(_, b)| b.updated)
                .map(|(ip, _)| *ip)
            {
                self.sources.remove(&stalest);
            }
        }
    }

    /// Sources tracked now.
    pub fn sources(&self) -> usize {
        self.sources.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_allows_its_rate() {
        let mut b = TokenBucket::new(10, Instant::from_micros(0));
        let burst = (0..100).filter(|_| b.take(Instant::from_micros(0))).count();
        assert_eq!(burst, 10);
        // Over 10 more seconds, one take every millisecond: 100 more tokens.
        let later = (1..=10_000u64)
            .filter(|i| b.take(Instant::from_micros(i * 1000)))
            .count();
        assert_eq!(later, 100);
        assert!(!TokenBucket::new(0, Instant::from_micros(0)).take(Instant::from_micros(u64::MAX)));
    }

    #[test]
    fn per_source_and_global_limits() {
        let mut l = HandshakeLimiter::new(50, 5, Instant::from_micros(0));
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        assert_eq!(
            (0..20)
                .filter(|_| l.allow(a, Instant::from_micros(0)))
                .count(),
            5
        );
        // 100 other sources get the 45 global tokens left.
        let others = (0..100u32)
            .filter(|i| l.allow(IpAddr::from(i.to_be_bytes()), Instant::from_micros(0)))
            .count();
        assert_eq!(others, 45);
    }

    #[test]
    fn an_ipv6_slash_64_is_one_source() {
        let mut l = HandshakeLimiter::new(1000, 3, Instant::from_micros(0));
        let t = Instant::from_micros(0);
        let taken = (0..10u16)
            .filter(|i| l.allow(format!("2001:db8:1:2::{i:x}").parse().unwrap(), t))
            .count();
        assert_eq!(taken, 3);
        assert!(l.allow("2001:db8:1:3::1".parse().unwrap(), t));
        assert_eq!(
            source_key("::ffff:192.0.2.7".parse().unwrap()),
            "192.0.2.7".parse::<IpAddr>().unwrap()
        );
    }

    #[test]
    fn under_load_when_the_global_bucket_runs_low() {
        let t = Instant::from_micros(0);
        let mut l = HandshakeLimiter::new(100, 1000, t);
        assert!(!l.under_load(t));
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        for _ in 0..75 {
            assert!(l.allow(a, t));
        }
        assert!(!l.under_load(t));
        assert!(l.allow(a, t));
        assert!(l.under_load(t));
        // Proven sources go on past the global bucket, within their own.
        for _ in 0..24 {
            assert!(l.allow(a, t));
        }
        assert!(!l.allow(a, t));
        assert!(l.allow_proven(a, t));
    }

    #[test]
    fn sources_stay_bounded() {
        let mut l = HandshakeLimiter::new(u32::MAX, 1, Instant::from_micros(0));
        for i in 0..(3 * MAX_SOURCES as u32) {
            assert!(l.allow(
                IpAddr::from(i.to_be_bytes()),
                Instant::from_micros(u64::from(i))
            ));
            assert!(l.sources() <= MAX_SOURCES);
        }
    }
}
