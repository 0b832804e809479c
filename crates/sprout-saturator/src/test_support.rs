//! Helpers shared by the unit tests of the sender and the recorder.

use crate::wire::{AckInfo, DataHeader, Dir};

/// The session of the tests.
pub(crate) const S: u64 = 0xfeed;

/// A data packet of session [`S`], downlink.
pub(crate) fn data(seq: u64, sent_us: u64) -> DataHeader {
    DataHeader {
        session: S,
        dir: Dir::Down,
        seq,
        sent_us,
        window: 0,
        rtt_ms: 0,
        probe: false,
        ack: None,
    }
}

/// An ack of everything up to `highest_seq`, no loss, no queueing delay reported.
pub(crate) fn ack(highest_seq: u64, echo_sent_us: u64) -> AckInfo {
    AckInfo {
        highest_seq,
        echo_sent_us,
        ack_delay_us: 0,
        received: highest_seq + 1,
        lost: 0,
        queue_delay_us: u32::MAX,
    }
}
