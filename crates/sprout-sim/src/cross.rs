//! Cross traffic in the simulator ([`SimConfig::cross`](crate::sim::SimConfig::cross)): a bulk
//! TCP transfer beside the scheme's flow, in each direction that carries data, on the same
//! links. Its packets are a flow of their own ([`CROSS_FLOW`]) for an FQ-CoDel queue and count
//! in none of the direction's metrics (only in the link's counters and `cross_bytes`).

use sprout_core::Instant;
use sprout_tcp::{CcKind, Segment, TcpConfig, TcpEndpoint};

/// The flow key of the cross traffic's packets on the link ([`sprout_link::Link::send_flow`]);
/// the scheme's are sent with [`sprout_link::Link::send`], key 0. With Linux's 1024 flow
/// queues the two keys fall in different queues.
pub(crate) const CROSS_FLOW: u32 = 1;

/// One side's end of the cross traffic's TCP connection: as the scheme's TCP peers, the
/// mobile opens it and the server listens; a kernel stack, on time.
pub(crate) struct CrossEnd {
    tcp: Box<TcpEndpoint>,
    /// When its timers are next due.
    wake: Instant,
    /// A segment reached it (or it started) since it last acted.
    woken: bool,
}

impl CrossEnd {
    /// The end starting at `now`: opening the connection (`opens`) or listening, sending bulk
    /// data if `bulk`.
    pub(crate) fn new(cfg: &TcpConfig, cc: CcKind, opens: bool, bulk: bool, now: Instant) -> Self {
        let mut tcp = if opens {
            TcpEndpoint::connect(cfg.clone(), cc, now)
        } else {
            TcpEndpoint::listen(cfg.clone(), cc, now)
        };
        tcp.set_bulk(bulk);
        CrossEnd {
            tcp: Box::new(tcp),
            wake: now,
            woken: true,
        }
    }

    /// At `now`, if a segment woke it or its timers are due: runs its timers and hands every
    /// segment it sends to `send`.
    pub(crate) fn act(&mut self, now: Instant, mut send: impl FnMut(Segment)) {
        if !std::mem::take(&mut self.woken) && now < self.wake {
            return;
        }
        self.tcp.handle_timeout(now);
        while let Some(seg) = self.tcp.poll_transmit(now) {
            send(seg);
        }
        self.wake = self.tcp.poll_timeout().unwrap_or(Instant::MAX);
    }

    /// A segment of the connection reached this end at `now`.
    pub(crate) fn receive(&mut self, now: Instant, seg: &Segment) {
        self.tcp.handle_segment(now, seg);
        self.woken = true;
    }

    /// When this end next needs to act (its timers), if nothing reaches it before.
    pub(crate) fn wake(&self) -> Instant {
        self.wake
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sprout_link::fq_codel::{flow_bucket, FQ_CODEL_DEFAULT_FLOWS};

    #[test]
    fn the_cross_traffic_has_a_flow_queue_of_its_own() {
        assert_ne!(
            flow_bucket(0, FQ_CODEL_DEFAULT_FLOWS),
            flow_bucket(CROSS_FLOW, FQ_CODEL_DEFAULT_FLOWS)
        );
    }
}
