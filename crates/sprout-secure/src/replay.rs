//! The sliding replay window of RFC 6479: a ring of 64-bit blocks of bits, one bit per
//! counter, so a check is O(1) and the window slides a block at a time.

/// Blocks of 64 bits in the ring.
const BLOCKS: usize = 32;
/// Bits in the ring.
const BITS: u64 = BLOCKS as u64 * 64;

/// Datagrams the window covers behind the highest counter seen.
pub const WINDOW: u64 = 2048 - 64;

/// Why a counter is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplayError {
    /// Already seen.
    Replayed,
    /// More than [`WINDOW`] behind the highest counter seen.
    TooOld,
}

/// The counters seen of one key, in a window of [`WINDOW`] behind the highest.
#[derive(Clone, Debug)]
pub struct ReplayWindow {
    /// The highest counter seen (0 before any).
    top: u64,
    /// Whether any counter was seen.
    any: bool,
    /// Bit `c % BITS` is set when counter `c` (in the window) was seen.
    ring: [u64; BLOCKS],
}

impl Default for ReplayWindow {
    fn default() -> Self {
        ReplayWindow::new()
    }
}

impl ReplayWindow {
    /// A window that has seen nothing.
    pub fn new() -> ReplayWindow {
        ReplayWindow {
            top: 0,
            any: false,
            ring: [0; BLOCKS],
        }
    }

    /// The highest counter seen (0 before any).
    pub fn highest(&self) -> u64 {
        self.top
    }

    /// Whether `counter` may be accepted (not seen, not too old); changes nothing.
    pub fn check(&self, counter: u64) -> Result<(), ReplayError> {
        if counter > self.top {
            return Ok(());
        }
        if self.top - counter > WINDOW {
            return Err(ReplayError::TooOld);
        }
        let bit = counter % BITS;
        if self.ring[(bit / 64) as usize] & (1 << (bit % 64)) != 0 {
            Err(ReplayError::Replayed)
        } else {
            Ok(())
        }
    }

    /// Marks `counter` seen (after its datagram's tag verified); returns whether it is the
    /// highest counter seen yet (the first one always is). Call only after
    /// [`ReplayWindow::check`] accepted it.
    pub fn mark(&mut self, counter: u64) -> bool {
        let newest = !self.any || counter > self.top;
        self.any = true;
        if newest {
            let current_block = self.top / 64;
            let new_block = counter / 64;
            let slide = (new_block - current_block).min(BLOCKS as u64);
            for i in 1..=slide {
                self.ring[((current_block + i) % BLOCKS as u64) as usize] = 0;
            }
            self.top = counter;
        }
        let bit = counter % BITS;
        self.ring[(bit / 64) as usize] |= 1 << (bit % 64);
        newest
    }

    /// Checks and marks in one step.
    pub fn accept(&mut self, counter: u64) -> Result<bool, ReplayError> {
        self.check(counter)?;
        Ok(self.mark(counter))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_order_reordered_replayed_and_old() {
        let mut w = ReplayWindow::new();
        assert_eq!(w.accept(0), Ok(true));
        assert_eq!(w.accept(0), Err(ReplayError::Replayed));
        assert_eq!(w.accept(5), Ok(true));
        assert_eq!(w.accept(3), Ok(false));
        assert_eq!(w.accept(3), Err(ReplayError::Replayed));
        assert_eq!(w.accept(1), Ok(false));
        assert_eq!(w.accept(10_000), Ok(true));
        assert_eq!(w.accept(10_000 - WINDOW), Ok(false));
        assert_eq!(w.accept(10_000 - WINDOW - 1), Err(ReplayError::TooOld));
        assert_eq!(w.accept(5), Err(ReplayError::TooOld));
        assert_eq!(w.accept(u64::MAX), Ok(true));
        assert_eq!(w.accept(u64::MAX), Err(ReplayError::Replayed));
        assert_eq!(w.accept(u64::MAX - WINDOW), Ok(false));
        assert_eq!(w.accept(0), Err(ReplayError::TooOld));
    }

    #[test]
    fn matches_a_set_model() {
        // A long pseudo-random walk of counters against a plain set of everything seen.
        let mut w = ReplayWindow::new();
        let mut seen = std::collections::HashSet::new();
        let mut top = 0u64;
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let c = match x % 8 {
                0 => top + 1 + (x >> 20) % 3000,
                1..=5 => top.saturating_sub((x >> 20) % 2100),
                _ => top + 1,
            };
            let want = if c <= top && top - c > WINDOW {
                Err(ReplayError::TooOld)
            } else if seen.contains(&c) {
                Err(ReplayError::Replayed)
            } else {
                Ok(c > top || seen.is_empty())
            };
            let got = w.accept(c);
            assert_eq!(got, want, "counter {c}, top {top}");
            if got.is_ok() {
                seen.insert(c);
                top = top.max(c);
            }
        }
    }
}
