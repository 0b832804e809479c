//! A non-bulk application at the agent's sender.

use std::collections::VecDeque;

use sprout_core::Instant;

use crate::app::{App, Source};
use crate::app_metrics::Ledger;
use crate::sim::MAX_SENDER_BACKLOG_BYTES;

/// A non-bulk application at the agent's sender: its arrival process, the messages it created
/// and the datagrams waiting to be sent.
#[derive(Clone, Debug)]
pub(super) struct EnvApp {
    pub(super) source: Source,
    pub(super) ledger: Ledger,
    /// Datagrams waiting at the sender, in order: (message, bytes).
    pub(super) queue: VecDeque<(u32, u32)>,
    /// Bytes in `queue`.
    pub(super) queued_bytes: u64,
    /// Application bytes created in the current step.
    pub(super) step_offered_bytes: u64,
    /// Application-level delays (µs) of the messages completed in the current step.
    pub(super) step_delays_us: Vec<u64>,
}

impl EnvApp {
    /// The application of `app` starting at `start`; `None` for bulk.
    pub(super) fn new(app: App, start: Instant) -> Option<Box<EnvApp>> {
        Source::new(app, start).map(|source| {
            Box::new(EnvApp {
                source,
                ledger: Ledger::default(),
                queue: VecDeque::new(),
                queued_bytes: 0,
                step_offered_bytes: 0,
                step_delays_us: Vec::new(),
            })
        })
    }

    /// Hands the sender every message created by `until`, cut into datagrams of at most
    /// `max_payload` bytes; adaptive video sizes a frame by `allowance` (bytes) when nothing
    /// waits, and skips it otherwise. A message beyond [`MAX_SENDER_BACKLOG_BYTES`] is dropped
    /// at the sender (never delivered).
    pub(super) fn hand_over(&mut self, until: Instant, max_payload: u32, allowance: u64) {
        while self.source.next_at() <= until {
            let created = self.source.next_at();
            let idle = self.queue.is_empty();
            let Some(bytes) = self.source.emit(|| idle.then_some(allowance)) else {
                continue;
            };
            self.step_offered_bytes += bytes;
            if self.queued_bytes.saturating_add(bytes) > MAX_SENDER_BACKLOG_BYTES {
                self.ledger.open(created, bytes, 1);
                continue;
            }
            let max = u64::from(max_payload.max(1));
            let datagrams = bytes.div_ceil(max).max(1);
            let index = self.ledger.open(created, bytes, datagrams as u32);
            for k in 0..datagrams {
                let len = (bytes - k * max).min(max);
                self.queue.push_back((index, len as u32));
                self.queued_bytes += len;
            }
        }
    }

    /// A datagram of `message` reached the receiver `at`.
    pub(super) fn arrived(&mut self, message: u32, at: Instant) {
        let i = message as usize;
        let done = |l: &Ledger| l.messages().get(i).and_then(|m| m.delivered);
        if done(&self.ledger).is_some() {
            return;
        }
        self.ledger.datagram_arrived(message, at);
        if let Some(t) = done(&self.ledger) {
            let created = self.ledger.messages()[i].created;
            self.step_delays_us.push((t - created).as_micros());
        }
    }
}
