//! Helpers shared by the unit tests of the sender and the recorder.

use sprout_core::direction::Direction;
use sprout_core::time::Instant;

use crate::wire::{AckInfo, DataHeader};

/// The session of the tests.
pub(crate) const S: u64 = 0xfeed;

/// The wire's saturated queueing delay (`u32::MAX` µs): none that the sender believes.
const NO_QUEUE_DELAY: u32 = u32::MAX;

/// A data packet of session [`S`], downlink.
pub(crate) fn data(seq: u64, sent: Instant) -> DataHeader {
    DataHeader {
        session: S,
        dir: Direction::Down,
        seq,
        sent_us: sent.as_micros(),
        window: 0,
        rtt_ms: 0,
        probe: false,
        ack: None,
    }
}

/// An ack of everything up to `highest_seq`, no loss, no queueing delay reported.
pub(crate) fn ack(highest_seq: u64, echo_sent: Instant) -> AckInfo {
    AckInfo {
        highest_seq,
        echo_sent_us: echo_sent.as_micros(),
        ack_delay_us: 0,
        received: highest_seq + 1,
        lost: 0,
        queue_delay_us: NO_QUEUE_DELAY,
    }
}
