//! The link's queue as the link runs it: the FIFO of [`crate::queue`] (drop-tail, CoDel,
//! PIE) or FQ-CoDel's flow queues ([`crate::fq_codel`]), one type over both.

use crate::ecn::Marking;
use crate::fq_codel::{FqCodel, FqParams};
use crate::queue::{Admission, ByteQueue, QueueConfig};

/// The link's queue: the FIFO (drop-tail, CoDel, PIE) or FQ-CoDel's flow queues. A struct
/// rather than an enum, so that the FIFO, the default, is reached without a discriminant: the
/// link tests FQ-CoDel's box once per event and then runs the FIFO's code as it always has,
/// FQ-CoDel's in functions of their own.
#[derive(Debug, Clone)]
pub(crate) struct LinkQueue<P> {
    /// The FIFO; empty and unused with FQ-CoDel.
    pub(crate) fifo: ByteQueue<P>,
    /// FQ-CoDel, when the configuration names it.
    pub(crate) fq: Option<Box<FqCodel<P>>>,
}

impl<P> LinkQueue<P> {
    /// The queue `config` names, admitting as `admission` says, PIE's drops drawn from `seed`,
    /// marking as `marking` says.
    pub(crate) fn new(
        config: QueueConfig,
        admission: Admission,
        seed: u64,
        marking: Marking,
    ) -> Self {
        let fq = match config {
            QueueConfig::FqCodel {
                target_us,
                interval_us,
                quantum_bytes,
                flows,
                limit_packets,
                memory_limit_bytes,
            } => Some(Box::new(FqCodel::new(
                FqParams {
                    target_us: target_us.as_micros(),
                    interval_us: interval_us.as_micros(),
                    quantum: quantum_bytes,
                    flows,
                    limit_packets: u64::from(limit_packets),
                    limit_bytes: memory_limit_bytes,
                },
                admission,
                marking,
            ))),
            _ => None,
        };
        let fifo = if fq.is_some() {
            ByteQueue::new(
                QueueConfig::default(),
                Admission::default(),
                seed,
                Marking::default(),
            )
        } else {
            ByteQueue::new(config, admission, seed, marking)
        };
        LinkQueue { fifo, fq }
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        match &self.fq {
            None => self.fifo.is_empty(),
            Some(q) => q.len() == 0,
        }
    }

    /// Packets held, a partly sent one included.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        match &self.fq {
            None => self.fifo.len(),
            Some(q) => q.len(),
        }
    }

    /// Full sizes of the packets held (bytes).
    #[inline]
    pub(crate) fn total_bytes(&self) -> u64 {
        match &self.fq {
            None => self.fifo.total_bytes(),
            Some(q) => q.total_bytes(),
        }
    }

    /// Bytes still to transmit (bytes).
    #[inline]
    pub(crate) fn remaining_bytes(&self) -> u64 {
        match &self.fq {
            None => self.fifo.remaining_bytes(),
            Some(q) => q.remaining_bytes(),
        }
    }

    /// The marks made: the AQM's and the step's, packets and bytes.
    pub(crate) fn marking(&self) -> &Marking {
        match &self.fq {
            None => &self.fifo.marking,
            Some(q) => &q.marking,
        }
    }
}
