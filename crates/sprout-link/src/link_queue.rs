//! The link's queue as the link runs it: the FIFO of [`crate::queue`] (drop-tail, CoDel,
//! PIE) or FQ-CoDel's flow queues ([`crate::fq_codel`]), one type over both.

use sprout_core::time::Instant;

use crate::fq_codel::{FqCodel, FqParams};
use crate::queue::{Admission, ByteQueue, DropReason, Packet, QueueConfig, Served};

/// The link's queue: the FIFO (drop-tail, CoDel, PIE) or FQ-CoDel's flow queues.
#[derive(Debug, Clone)]
pub(crate) enum LinkQueue<P> {
    Fifo(ByteQueue<P>),
    Fq(Box<FqCodel<P>>),
}

impl<P> LinkQueue<P> {
    /// The queue `config` names, admitting as `admission` says, PIE's drops drawn from `seed`.
    pub(crate) fn new(config: QueueConfig, admission: Admission, seed: u64) -> Self {
        match config {
            QueueConfig::FqCodel {
                target_us,
                interval_us,
                quantum_bytes,
                flows,
                limit_packets,
                memory_limit_bytes,
            } => LinkQueue::Fq(Box::new(FqCodel::new(
                FqParams {
                    target_us: target_us.as_micros(),
                    interval_us: interval_us.as_micros(),
                    quantum: quantum_bytes,
                    flows,
                    limit_packets: u64::from(limit_packets),
                    limit_bytes: memory_limit_bytes,
                },
                admission,
            ))),
            _ => LinkQueue::Fifo(ByteQueue::new(config, admission, seed)),
        }
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        match self {
            LinkQueue::Fifo(q) => q.is_empty(),
            LinkQueue::Fq(q) => q.len() == 0,
        }
    }

    /// Packets held, a partly sent one included.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        match self {
            LinkQueue::Fifo(q) => q.len(),
            LinkQueue::Fq(q) => q.len(),
        }
    }

    /// Full sizes of the packets held (bytes).
    #[inline]
    pub(crate) fn total_bytes(&self) -> u64 {
        match self {
            LinkQueue::Fifo(q) => q.total_bytes(),
            LinkQueue::Fq(q) => q.total_bytes(),
        }
    }

    /// Bytes still to transmit (bytes).
    #[inline]
    pub(crate) fn remaining_bytes(&self) -> u64 {
        match self {
            LinkQueue::Fifo(q) => q.remaining_bytes(),
            LinkQueue::Fq(q) => q.remaining_bytes(),
        }
    }

    /// Offers a packet (see [`ByteQueue::offer`]).
    #[inline]
    pub(crate) fn offer(
        &mut self,
        packet: Packet<P>,
        out: &mut impl FnMut(Served<P>),
    ) -> Result<(), (Packet<P>, DropReason)> {
        match self {
            LinkQueue::Fifo(q) => q.offer(packet, out),
            LinkQueue::Fq(q) => q.offer(packet, out),
        }
    }

    /// Spends one opportunity of `budget` bytes at `now` (see [`ByteQueue::serve`]).
    #[inline]
    pub(crate) fn serve(&mut self, now: Instant, budget: u32, mut out: impl FnMut(Served<P>)) {
        match self {
            LinkQueue::Fifo(q) => q.serve(now, budget, out),
            LinkQueue::Fq(q) => q.serve(now.as_micros(), budget, &mut out),
        }
    }
}
