//! The sliding replay window of RFC 6479: a ring of 64-bit blocks of bits, one bit per
//! counter, so a check is O(1) and the window slides a block at a time.

/// Datagrams the window covers behind the highest counter seen.
pub const WINDOW: u64 = 2048 - 64;
