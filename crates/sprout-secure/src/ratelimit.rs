//! Token buckets that bound how many handshakes are processed per second.
//!
//! A bucket holds up to one second's worth of tokens and refills continuously; time is the
//! `now` the caller passes (no clock is read). [`HandshakeLimiter`] combines a global bucket
//! with one bucket per source IP address, in a map bounded to [`MAX_SOURCES`] entries (the
//! stalest is evicted when a new source comes and the map is full).

use std::collections::HashMap;
use std::net::IpAddr;

use sprout_core::time::Instant;

/// Most source addresses tracked at once.
pub const MAX_SOURCES: usize = 4096;

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

    /// Whether the bucket is full at `now` (then it is as good as a new one).
    pub fn is_full(&self, now: Instant) -> bool {
        let elapsed = now - self.updated;
        self.units
            .saturating_add(elapsed.as_micros().saturating_mul(self.rate))
            >= self.capacity()
    }
}

/// The handshake rate limits of a server: all sources together, and per source IP address.
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
        if !self.sources.contains_key(&source) && self.sources.len() >= MAX_SOURCES {
            self.evict(now);
        }
        let rate = self.per_source_rate;
        let bucket = self
            .sources
            .entry(source)
            .or_insert_with(|| TokenBucket::new(rate, now));
        if !bucket.take(now) {
            return false;
        }
        self.global.take(now)
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
