//! Helpers shared by the core's tests that run two connections over a simulated path.

use sprout_core::{Connection, Instant};

/// Datagrams on their way, each with the millisecond it arrives.
pub(crate) type InFlight = Vec<(u64, Vec<u8>)>;

/// Hands `to` every datagram of `in_flight` due by `now_ms` (errors ignored, as a peer's are);
/// the others stay on their way.
pub(crate) fn deliver_due(to: &mut Connection, in_flight: &mut InFlight, now_ms: u64) {
    let now = Instant::from_millis(now_ms);
    for (at, d) in std::mem::take(in_flight) {
        if at <= now_ms {
            let _ = to.handle_datagram(now, &d);
        } else {
            in_flight.push((at, d));
        }
    }
}
